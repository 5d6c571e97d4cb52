"""The protocol engine: everything between bytes a transport moved and the functions a server
registered, with no I/O of its own.

JSON-RPC messages and errors (``jsonrpc``), the revisions and how older ones are served
(``versions``, ``downlevel``, ``batches``), the connection that correlates requests and replies
(``protocol``) over the one-method transport interface it drives (``transport``), a handshake
session (``session``) and a stateless request (``stateless``, ``stateless_meta``,
``request_state``), what a handler gets (``context``), the server and its registries
(``server``, ``types``, ``typed``, ``skills``, ``files``, ``tasks``), and the interfaces of the
stores a deployment may share (``stores``, with the in-process ``memory_stores``).

Every other folder of the package sits above this one: transports, stores, auth, clients,
built-in servers and the command line import from here, never the reverse.
"""

"""Tests of the transport-free protocol core, driven through MemoryTransport."""

"""Helpers the tests share: waiting on conditions, dead processes, byte splits, sessions."""

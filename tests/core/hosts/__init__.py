"""Tests of tray.core.hosts."""

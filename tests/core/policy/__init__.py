"""Tests of tray.core.policy."""

"""Tests of tray.core.answers."""

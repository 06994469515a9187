"""Tests of tray.core.session."""

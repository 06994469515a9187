"""Tests of tray.core.config."""

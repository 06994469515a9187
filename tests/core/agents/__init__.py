"""Tests of tray.core.agents."""

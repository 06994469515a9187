"""Tests of tray.core.away."""

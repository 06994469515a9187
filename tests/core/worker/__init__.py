"""Tests of tray.core.worker."""

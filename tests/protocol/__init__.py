"""Tests of tray/protocol (pure): the scanner, reports, records, attention events and the
user's input, with every byte split and hypothesis."""

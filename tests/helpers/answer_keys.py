"""The answer settings tray starts with: the keys of the shipped agents' rules files."""

from __future__ import annotations

from tray.core.answers.gate import AnswerSettings
from tray.state.agent_files import shipped_agent_book

SHIPPED_KEYS = shipped_agent_book().answer_keys()
SHIPPED_SETTINGS = AnswerSettings(apps=SHIPPED_KEYS)

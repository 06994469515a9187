# The README's commands. `make demo` sets up and shows the icon and a notification;
# `make check` is the quick loop for every change (lint, types and the tests that need no
# process, display, bus or network); `make test` installs everything the tests need and
# runs them all.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CMD ?= $(SHELL)

# Debian packages: PyGObject's build headers, and the real desktop the tests drive.
BUILD_DEBS := python3-venv libgirepository1.0-dev libcairo2-dev pkg-config gir1.2-gtk-3.0 \
	gir1.2-ayatanaappindicator3-0.1
TEST_DEBS := xvfb x11-utils xdotool dbus-daemon dbus-x11 libnotify-bin dunst trayer tmux \
	haskell-gtk-sni-tray-utils bsdutils xclip desktop-file-utils appstream zsh fish \
	openssh-server openssh-client systemd
# Real terminals and a window manager for the focus tests, without their recommends
# (konsole's would bring much of KDE).
FOCUS_DEBS := gnome-terminal kitty libgl1-mesa-dri xterm openbox konsole
# A real screen locker and idle sources for the away tests (issue: away). None more: the
# X11 idle test needs only Xvfb and xdotool (TEST_DEBS), and bookworm has no locker that
# runs headless (no xfce4-screensaver; light-locker needs logind and LightDM), so the
# D-Bus sources are tested against fakes on a private bus.
AWAY_DEBS :=
# The desktops users have (issue: desktops), headless for real: GNOME Shell 43 with its
# AppIndicator extension (gjs runs its notification service), and KDE Plasma 5.27 on
# kwin_wayland (Xwayland for the X11 clients there; qtwayland5 keeps kded5 alive,
# plasma-desktop gives plasmashell its corona). How the tests start them:
# tests/helpers/gnome_shell.py and tests/helpers/plasma.py.
GNOME_DEBS := gnome-shell gnome-shell-extension-appindicator gjs xwayland
KDE_DEBS := kwin-wayland plasma-workspace kded5 plasma-framework libkscreenlocker5 \
	qml-module-org-kde-kirigami2 qtwayland5 plasma-workspace-wayland plasma-desktop \
	plasma-wayland-protocols
# Real agents from npm, pinned, for the answering tests (issue: answer), in a folder of
# their own; the stamp names the versions, so changing one reinstalls.
# npm comes with NodeSource's nodejs, or as Debian's own package: install only when absent.
AGENT_DEBS := nodejs npm
AGENTS_DIR := .agents
CLAUDE_CODE_VERSION := 2.1.332
CODEX_VERSION := 0.171.0
# The agents that speak no OSC 7501 (issue: every agent), read through their rules in
# tray/core/agents/; aider comes from the package index, in a venv of its own.
GEMINI_CLI_VERSION := 0.61.0
QWEN_CODE_VERSION := 0.24.4
COPILOT_CLI_VERSION := 1.0.102
OPENCODE_VERSION := 1.18.33
AIDER_VERSION := 0.86.2
AGENT_VERSIONS := $(CLAUDE_CODE_VERSION)-$(CODEX_VERSION)-$(GEMINI_CLI_VERSION)-$(QWEN_CODE_VERSION)-$(COPILOT_CLI_VERSION)-$(OPENCODE_VERSION)-$(AIDER_VERSION)
AGENTS_STAMP := $(AGENTS_DIR)/.installed-$(AGENT_VERSIONS)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# `make test`'s workers (pytest-xdist). The suite mostly waits on other programs, so more
# workers than cores: each has its own Xvfb, buses, ports and state, and starts GNOME
# Shell or Plasma only when it is handed their tests (tests/helpers/tiers.py groups
# each desktop's tests on one worker).
TEST_WORKERS ?= 4

.PHONY: setup demo run app check test lint bench clean agents

# Installs only the packages that are missing, and only where apt-get exists; the second
# argument is more options for apt-get.
define apt_install
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null \
		| grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if command -v apt-get >/dev/null; then \
			echo "installing:" $$missing; \
			$(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(2) $$missing >/dev/null; \
		else echo "please install:" $$missing; fi; \
	fi
endef

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(call apt_install,$(BUILD_DEBS))
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "tray needs Python 3.11 or newer"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,gtk]'
	touch $@

demo: setup
	$(BIN)/tray demo

run: setup
	$(BIN)/tray run -- $(CMD)

app: setup
	$(BIN)/tray app

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

agents: $(AGENTS_STAMP)

$(AGENTS_STAMP):
	@command -v npm >/dev/null || { echo "installing:" $(AGENT_DEBS); $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(AGENT_DEBS) >/dev/null; }
	mkdir -p $(AGENTS_DIR)
	cd $(AGENTS_DIR) && npm install --no-audit --no-fund --no-save \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) \
		@google/gemini-cli@$(GEMINI_CLI_VERSION) @qwen-code/qwen-code@$(QWEN_CODE_VERSION) \
		@github/copilot@$(COPILOT_CLI_VERSION) opencode-ai@$(OPENCODE_VERSION)
	$(PYTHON) -m venv $(AGENTS_DIR)/aider
	$(AGENTS_DIR)/aider/bin/pip install -q --upgrade pip
	$(AGENTS_DIR)/aider/bin/pip install -q aider-chat==$(AIDER_VERSION)
	rm -f $(AGENTS_DIR)/.installed-*
	touch $@

# The tests of the `check` tier (tests/helpers/tiers.py), each watched: one that starts a
# process or opens a socket fails. Hypothesis's quick profile (tests/conftest.py).
check: lint
	HYPOTHESIS_PROFILE=quick $(BIN)/python -m pytest -q --tier=check

# Every test, on $(TEST_WORKERS) workers, with hypothesis's thorough profile; a hung test
# ends after pyproject's timeout, with its stack. The temporary folders go under a short
# path of this run's own: a worker's default (/tmp/pytest-of-USER/pytest-N/popen-gwN/)
# leaves a bus or a socket in a test's folder too little of the 107 bytes a Unix
# socket's path may have. They are kept when a test fails.
test: setup lint agents
	$(call apt_install,$(TEST_DEBS))
	$(call apt_install,$(FOCUS_DEBS) $(AWAY_DEBS) $(GNOME_DEBS) $(KDE_DEBS),--no-install-recommends)
	base=$$(mktemp -d /tmp/tt.XXXXXX) && \
	NO_AT_BRIDGE=1 HYPOTHESIS_PROFILE=thorough $(BIN)/python -m pytest -q \
		-n $(TEST_WORKERS) --dist loadgroup --basetemp=$$base; \
	status=$$?; if [ $$status -eq 0 ]; then rm -rf $$base; else echo "kept $$base"; fi; \
	exit $$status

# Claude Code's first frame is one of the start-up figures: the agents come too.
bench: setup agents
	$(BIN)/python tests/benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-bench .venv-bench-asciinema $(AGENTS_DIR) .mypy_cache .pytest_cache .ruff_cache .hypothesis

# The README's commands. `make demo` sets up and shows the icon and a notification;
# `make test` installs everything the tests need and runs them all.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CMD ?= $(SHELL)

# Debian packages: PyGObject's build headers, and the real desktop the tests drive.
BUILD_DEBS := python3-venv libgirepository1.0-dev libcairo2-dev pkg-config gir1.2-gtk-3.0 \
	gir1.2-ayatanaappindicator3-0.1
TEST_DEBS := xvfb x11-utils xdotool dbus-daemon dbus-x11 libnotify-bin dunst trayer tmux \
	haskell-gtk-sni-tray-utils bsdutils xclip desktop-file-utils appstream zsh fish \
	openssh-server openssh-client
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup demo run app test lint bench clean

# Installs only the packages that are missing, and only where apt-get exists.
define apt_install
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null \
		| grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if command -v apt-get >/dev/null; then \
			echo "installing:" $$missing; \
			$(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
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

test: setup lint
	$(call apt_install,$(TEST_DEBS))
	NO_AT_BRIDGE=1 $(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python tests/benchmarks/run.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis

"""The GTK menu of pystray's gtk and appindicator backends, changed in place when only
its words changed.

Given a menu, pystray builds a whole new Gtk.Menu; the appindicator backend then
exports every item of it again over D-Bus, and the tray host reads them all back. A
busy app hands over a menu of ~140 items every couple of seconds whose only change is
text (a message, a percentage, an age): that rebuild was its largest cost. Here a menu
of the same shape as the one shown (the same items in the same places, with the same
kinds and flags) only gets its changed labels set, on the widgets already shown.

The widgets are built here, not by pystray, so that a click runs the action of the
item the widget shows now: pystray ties each widget to the item it was built from.
What is built is what pystray builds, widget for widget (tests/desktop/test_icon_menu.py
compares the two).

Everything here runs on the GTK thread (the backend's main loop).
"""

from __future__ import annotations

from typing import Any

# What an item's place in the menu depends on besides its words: separator or not,
# checked (None: no check box), radio, default (bold), enabled, and its submenu's shape
# (None: no submenu, so it runs an action).
Shape = tuple[tuple[bool, bool | None, bool, bool, bool, "Shape | None"], ...]


class ItemView:
    """One visible pystray item, each property read once (reading runs callables)."""

    __slots__ = ("checked", "default", "enabled", "item", "radio", "separator", "submenu", "text")

    def __init__(self, item: Any, separator: bool) -> None:
        self.item = item
        self.separator = separator
        self.text = "" if separator else str(item.text)
        self.checked: bool | None = None if separator else item.checked
        self.radio = False if separator else bool(item.radio)
        self.default = False if separator else bool(item.default)
        self.enabled = True if separator else bool(item.enabled)
        # pystray gives an item a submenu only when that submenu shows something.
        submenu = None if separator else item.submenu
        self.submenu = read_menu(submenu) if submenu else None


def read_menu(menu: Any) -> list[ItemView] | None:
    """The items a pystray menu shows, in pystray's order (hidden items left out,
    separators tidied); None when it shows nothing."""
    if not menu:
        return None
    separator = type(menu).SEPARATOR
    # Iterating a pystray Menu yields exactly the items its backends build.
    return [ItemView(item, item is separator) for item in menu]


def shape_of(views: list[ItemView]) -> Shape:
    return tuple(
        (
            view.separator,
            view.checked,
            view.radio,
            view.default,
            view.enabled,
            shape_of(view.submenu) if view.submenu is not None else None,
        )
        for view in views
    )


class ItemAction:
    """What a click on one widget runs: the action of the item the widget shows now.

    It holds no widget: a widget whose signal holds something that holds the widget
    would never be freed.
    """

    __slots__ = ("icon", "item")

    def __init__(self, icon: Any, item: Any) -> None:
        self.icon = icon
        self.item = item

    def __call__(self, _widget: Any) -> None:
        # As pystray's own handler: the action, then the menu brought up to date.
        try:
            self.item(self.icon)
        finally:
            self.icon.update_menu()


class ShownItem:
    """A widget in the shown menu: its text, and what a click on it runs (None for a
    separator or an item with a submenu)."""

    __slots__ = ("action", "children", "text", "widget")

    def __init__(
        self,
        widget: Any,
        text: str,
        action: ItemAction | None = None,
        children: list[ShownItem] | None = None,
    ) -> None:
        self.widget = widget
        self.text = text
        self.action = action
        self.children = children


def _bold(text: str) -> str:
    from gi.repository import GLib  # noqa: PLC0415  (present with these backends)

    escaped: str = GLib.markup_escape_text(text)
    return f"<b>{escaped}</b>"


class GtkMenus:
    """The Gtk.Menu an icon shows, kept while the menus given keep its shape.

    ``icon`` is the pystray icon: a click runs the item's action with it, and then asks
    it to update its menu, as pystray's own handler does.

    The shape compared is everything but the words. Enabled flags are part of it, so
    what changes in place is words alone: flags change seldom (with a session's state,
    or a message coming or going), words many times a second.
    """

    def __init__(self, icon: Any) -> None:
        self._icon = icon
        self._handle: Any = None
        self._shape: Shape | None = None
        self._shown: list[ShownItem] = []
        self.built = 0  # menus built anew
        self.updated = 0  # menus changed in place

    @property
    def handle(self) -> Any:
        """The Gtk.Menu shown, or None."""
        return self._handle

    def forget(self) -> None:
        """Build the next menu anew (after an error left the shown one in doubt)."""
        self._handle, self._shape, self._shown = None, None, []

    def show(self, menu: Any) -> tuple[Any, bool]:
        """The Gtk.Menu for ``menu`` (None when it shows nothing), and whether it is a
        new one, which the backend must be given; GTK thread only."""
        views = read_menu(menu)
        if views is None:
            self.forget()
            return None, True
        shape = shape_of(views)
        if self._handle is not None and shape == self._shape:
            self._update(self._shown, views)
            self.updated += 1
            return self._handle, False
        self._handle, self._shown = self._build(views)
        self._shape = shape
        self.built += 1
        return self._handle, True

    def _update(self, shown: list[ShownItem], views: list[ItemView]) -> None:
        for place, view in zip(shown, views, strict=True):
            if place.action is not None:
                place.action.item = view.item
            if view.text != place.text:
                place.text = view.text
                if view.default:
                    place.widget.get_child().set_markup(_bold(view.text))
                else:
                    place.widget.set_label(view.text)
            if place.children is not None and view.submenu is not None:
                self._update(place.children, view.submenu)

    def _build(self, views: list[ItemView]) -> tuple[Any, list[ShownItem]]:
        from gi.repository import Gtk  # noqa: PLC0415  (present with these backends)

        menu = Gtk.Menu.new()
        shown = [self._widget(view) for view in views]
        for place in shown:
            menu.append(place.widget)
        menu.show_all()
        return menu, shown

    def _widget(self, view: ItemView) -> ShownItem:
        from gi.repository import Gtk  # noqa: PLC0415  (present with these backends)

        if view.separator:
            return ShownItem(Gtk.SeparatorMenuItem(), view.text)
        if view.checked is not None:
            widget = Gtk.CheckMenuItem.new_with_label(view.text)
            # Before the action is connected: setting it active emits "activate".
            widget.set_active(view.checked)
            widget.set_draw_as_radio(view.radio)
        else:
            widget = Gtk.MenuItem.new_with_label(view.text)
        if view.submenu is not None:
            submenu, children = self._build(view.submenu)
            widget.set_submenu(submenu)
            place = ShownItem(widget, view.text, children=children)
        else:
            action = ItemAction(self._icon, view.item)
            widget.connect("activate", action)
            place = ShownItem(widget, view.text, action=action)
        if view.default:
            widget.get_child().set_markup(_bold(view.text))
        widget.set_sensitive(view.enabled)
        return place

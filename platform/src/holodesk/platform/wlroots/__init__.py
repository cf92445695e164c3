"""The wlroots route: sway, Hyprland, river and other wlroots compositors, spoken to directly.

These compositors offer what GNOME and KDE keep behind a portal as plain Wayland
protocols any client may bind: wlr-screencopy (read an output into a shared-memory
buffer), wlr-virtual-pointer and virtual-keyboard (inject input as a device of the
seat, with a keymap the client uploads). So this route needs no root, no
/dev/uinput, no D-Bus and no consent dialog, and it types any Unicode character:
characters go on spare keys of a keymap of our own (as wtype does).

Modules: `bindings` (pywayland classes generated from the vendored protocol XML in
protocols/), `connection` (one Wayland connection, its globals and outputs),
`outputs` (output geometry: logical layout, physical pixels, fractional scales),
`shm` (shared-memory buffers), `screen` (screencopy), `keymap` (the uploaded xkb
keymap), `input` (the InputDriver), `probe` (does this compositor offer the
protocols? for the backend choice), `route` (which Wayland route a session gets,
why, and what a person must approve: for `holodesk doctor`), `backend` (`create`: the
wlroots backend made of them).
"""

"""`holodesk tray`: the client in the system tray.

controller.py holds every decision (what runs, what each menu entry does, the
state shown) and runs sessions on its own event-loop thread; menu.py lists the menu
as plain data; both are tested without a tray. icon.py is the thin Qt layer drawing
that state (StatusNotifierItem over D-Bus, else an XEmbed icon); ask.py asks the user
for a task in a separate process, so Tk and the tray never share a thread.
"""

"""`holodesk tray`: the client in the system tray.

controller.py holds every decision (what runs, what each menu entry does, the
state shown) and runs sessions on its own event-loop thread; it is tested without
a tray. icon.py is the thin pystray layer drawing that state; ask.py asks the user
for a task in a separate process, so Tk and the tray never share a thread.
"""

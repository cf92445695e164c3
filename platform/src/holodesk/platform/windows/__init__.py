"""Windows internals of the `win32` backend; see `holodesk.platform.windows.backend`.

Only `user32` touches the OS (ctypes.WinDLL) and is imported only on Windows; every
other module here is pure logic, built and tested on any OS against a fake `WinApi`.
"""

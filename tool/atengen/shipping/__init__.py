"""Shipping an operator library as a wheel (aten_wheel): the typed stubs of its operators, the
facts of the built library that decide the wheel's tags, the check of the user's Python modules,
and the wheel itself, written with PyPA's `wheel` and `packaging`."""

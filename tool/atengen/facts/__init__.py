"""What rules_aten knows about torch: ``torch_facts`` (kept by hand, one block per supported
release), ``wheel_facts`` (what the @torch repository read from the installed wheel,
--torch_facts) and ``wheel_symbols`` (what a wheel's libraries export and its FunctionsManual.h
declares, read from the files).

Standard library only (with ``atengen.cached``): tool/torch_probe.py imports this package on the
user's interpreter, where neither the generator's dependencies nor torch's import can be assumed.
"""

"""The link steps of a library, after the linker: the missing-kernel check (``kernels``), the
stable-ABI check (``stable``) and the last step of an ABI-bound library (``bound_link``). They
read the linked library's symbols with ``atengen.facts.wheel_symbols``; standard library only.
"""

"""Same-device checks and device guards of generated wrappers.

In-tree device keys (CUDA, XPU) and external backends with `device_guard: True` share the
rules: an op with `device_check: ExactSame` checks that its tensors share a device, and an op
with `device_guard` (the default) switches to the device of its first tensor — self, then the
outputs, then the other inputs — or of its `device` argument for factories.
"""

from __future__ import annotations

from atengen.model.native_function import NativeFunction


def device_handling(
    f: NativeFunction, *, lazy_init_key: str | None, check_same_device: bool = True
) -> tuple[tuple[str, ...], str]:
    """(tensor arguments to check for a common device, a C++ device-guard statement or "").

    ``lazy_init_key``: a device type to initialise before a factory runs (CUDA's lazy init);
    None for backends, which initialise when they load. ``check_same_device`` False skips the
    check for ops that copy between devices.
    """
    args = f.func.arguments
    tensors = tuple(a.name for a in args.out + args.flat_positional if a.type.is_tensor_like())
    check = tensors if f.device_check == "ExactSame" and check_same_device else ()
    if not f.device_guard:
        return check, ""
    if args.tensor_options is not None:
        init = (
            f"at::globalContext().lazyInitDevice(c10::DeviceType::{lazy_init_key});\n  "
            if lazy_init_key
            else ""
        )
        return check, init + "const c10::DeviceGuard atg_device_guard(device_or_default(device));"
    self_arg = args.self_arg
    first = self_arg.name if self_arg is not None and self_arg.type.is_tensor_like() else None
    first = first or (tensors[0] if tensors else None)
    if first is None:
        return check, ""
    return check, f"const c10::OptionalDeviceGuard atg_device_guard(device_of({first}));"

"""Torch release strings ("2.14") as the rules compare them.

It loads nothing, so that tests/starlark tests it without a torch or a toolkit; torch.bzl and
stable.bzl pass in what they read of @torch.
"""

# The oldest release a stable library can target: the generated sources call what the C shim
# has since 2.11 (tool/atengen/stable/releases.py, OLDEST_TARGET).
OLDEST_STABLE_TARGET = "2.11"

def release_number(release):
    """(2, 14) for "2.14", or None when it is not major.minor (no sign, no leading zero).

    Args:
      release: the string.

    Returns:
      The pair, which compares as the releases do, or None.
    """
    parts = release.split(".")
    if len(parts) != 2 or not all([p.isdigit() and (p == "0" or not p.startswith("0")) for p in parts]):
        return None
    return (int(parts[0]), int(parts[1]))

def _hex2(n):
    digits = "0123456789ABCDEF"
    return digits[(n // 16) % 16] + digits[n % 16]

def torch_target_version(torch_target, build_release, build_version):
    """The -DTORCH_TARGET_VERSION of an aten_codegen(abi = "stable")'s torch_target.

    Args:
      torch_target: the attribute's value (any type: a user wrote it).
      build_release: the build's torch release ("2.13"; "unknown" when the probe could not tell).
      build_version: the build's torch version ("2.13.0+cpu"), for the message.

    Returns:
      ("0x020B000000000000" for "2.11", None), or (None, a one-line error message) unless
      torch_target is a release from OLDEST_STABLE_TARGET to the build's.
    """
    allowed = "a torch release from {} to {} (the build's torch {}), as major.minor".format(
        OLDEST_STABLE_TARGET,
        build_release,
        build_version,
    )
    number = release_number(torch_target) if type(torch_target) == "string" else None
    if number == None or number < release_number(OLDEST_STABLE_TARGET):
        return None, "rules_aten: torch_target = {} is not {}".format(repr(torch_target), allowed)
    build = release_number(build_release)
    if build != None and number > build:
        return None, ("rules_aten: torch_target = {} is newer than the build's torch {}: the " +
                      "headers cannot target a later release; use {}").format(repr(torch_target), build_version, allowed)

    # torch/headeronly/version.h: major, minor, patch and tweak in the top bytes.
    return "0x{}{}000000000000".format(_hex2(number[0]), _hex2(number[1])), None

"""The `@rules_aten_cuda_nvcc` repository: nvcc from PyPI, at the torch wheel's CUDA version.

@local_cuda (cuda.bzl) uses it when torch is a CUDA wheel and no installed CUDA toolkit of the
wheel's CUDA major version is found (or RULES_ATEN_CUDA_DIR=pypi). The CUDA wheels pin their CUDA
by `Requires-Dist: cuda-toolkit[...]==PIN` in torch's METADATA; the lock
(//third_party:cuda_nvcc_wheels.lock) names, for each CUDA version, the pins it serves and the
URL and sha256 of each wheel nvcc needs (nvidia-cuda-nvcc, -crt, -runtime, -cccl, nvidia-nvvm).
They are fetched with their sha256 (so Bazel's repository cache keeps them) and extracted into
one directory, a toolkit layout: nvidia/cu13/{bin/nvcc, include, nvvm, lib}.

$RULES_ATEN_CUDA_WHEELS_URL, when set, is where the wheels are fetched from instead of their
PyPI URLs: each wheel is `<it>/<the wheel's file name>` (a mirror, or a file:// directory that
`pip download --no-deps` filled).

The repository always holds nvcc.json: {"root", "cuda", "pin", "nvcc"} of the installed nvcc, or
{"error": the one-line message} when it cannot be installed (a pin the lock lacks, a download
that failed or whose sha256 differs), which @local_cuda reports once (repo_error.bzl). Only
@local_cuda reads it, and only when it needs it, so nothing is downloaded otherwise.
"""

CUDA_WHEELS_URL_ENV = "RULES_ATEN_CUDA_WHEELS_URL"

# @torch's defs.bzl: TORCH_VERSION, TORCH_CUDA and TORCH_DIR (rules/private/repositories/torch.bzl).
TORCH_DEFS = Label("@torch//:defs.bzl")

# What @local_cuda reads of this repository.
PYPI_NVCC_JSON = Label("@rules_aten_cuda_nvcc//:nvcc.json")

def torch_defs(rctx):
    """The torch wheel as @torch's defs.bzl describes it.

    Read from the file, not loaded: a repository rule cannot load() another repository's .bzl.

    Args:
      rctx: the repository_ctx.

    Returns:
      struct(version, cuda, dir): "" each when @torch could not be set up; cuda is "" for a CPU
      wheel.
    """
    values = {}
    for line in rctx.read(rctx.path(TORCH_DEFS)).split("\n"):
        for key in ["TORCH_VERSION", "TORCH_CUDA", "TORCH_DIR"]:
            prefix = key + " = \""
            if line.startswith(prefix) and line.endswith("\""):
                values[key] = line[len(prefix):-1]
    return struct(
        version = values.get("TORCH_VERSION", ""),
        cuda = values.get("TORCH_CUDA", ""),
        dir = values.get("TORCH_DIR", ""),
    )

def toolkit_pin(rctx, torch):
    """The cuda-toolkit version that torch's METADATA requires.

    Args:
      rctx: the repository_ctx.
      torch: torch_defs().

    Returns:
      The pin ("13.0.3"), or "" when the METADATA names none.
    """
    if not torch.dir:
        return ""
    site = rctx.path(torch.dir).dirname
    base = torch.version.split("+")[0]
    for entry in site.readdir():
        name = entry.basename
        if not name.endswith(".dist-info"):
            continue
        if name != "torch-{}.dist-info".format(base) and not name.startswith("torch-{}+".format(base)):
            continue
        metadata = entry.get_child("METADATA")
        if not metadata.exists:
            continue
        for line in rctx.read(metadata).split("\n"):
            if line.startswith("Requires-Dist: cuda-toolkit") and "==" in line:
                return line.split("==", 1)[1].split(";")[0].strip()
    return ""

def parse_lock(text, lock):
    """The entries of the lock (its header describes the format).

    Args:
      text: the lock's text.
      lock: the lock's label, for the message of a line that does not parse.

    Returns:
      {cuda: {"pins": [...], "wheels": [struct(package, version, url, sha256)]}}.
    """
    versions = {}
    for number, raw in enumerate(text.split("\n")):
        fields = [f for f in raw.split("#")[0].replace("\t", " ").split(" ") if f]
        if not fields:
            continue
        if fields[0] == "toolkit" and len(fields) >= 3:
            versions.setdefault(fields[1], {"pins": [], "wheels": []})["pins"].extend(fields[2:])
        elif fields[0] == "wheel" and len(fields) == 6:
            versions.setdefault(fields[1], {"pins": [], "wheels": []})["wheels"].append(struct(
                package = fields[2],
                version = fields[3],
                url = fields[4],
                sha256 = fields[5],
            ))
        else:
            fail("rules_aten: {} line {}: expected `toolkit CUDA PIN...` or `wheel CUDA PACKAGE VERSION URL SHA256`".format(lock, number + 1))
    return versions

def _entry(versions, torch, pin, lock):
    """(the lock's CUDA version for torch, None), or (None, the one-line error)."""
    for cuda, entry in versions.items():
        if (pin and pin in entry["pins"]) or (not pin and cuda == torch.cuda):
            return cuda, None
    have = sorted([p for entry in versions.values() for p in entry["pins"]])
    needed = "cuda-toolkit=={}".format(pin) if pin else "CUDA {}".format(torch.cuda)
    return None, ("rules_aten: torch {} requires {}, which {} has no nvcc wheels for (it has " +
                  "cuda-toolkit {}): install a CUDA {} toolkit and point RULES_ATEN_CUDA_DIR at " +
                  "it, or add that version's wheels to the lock (its header says how)").format(
        torch.version,
        needed,
        lock,
        ", ".join(have),
        torch.cuda.split(".")[0],
    )

def _download_error(rctx, wheel, url, torch, lock):
    """The one-line error of a wheel whose download failed (Bazel's warning above says why).

    A second download without the sha256 tells a file that differs from the lock's (a wrong
    mirror, a tampered file) from one that cannot be fetched at all."""
    name = url.split("/")[-1]
    check = rctx.download(url, output = "_check/" + name, allow_fail = True)
    if check.success:
        rctx.delete("_check")
        return ("rules_aten: {} from {} has sha256 {}, not the {} that {} pins: it is not the " +
                "wheel the lock names; fetch it from PyPI (unset {}) or fix the mirror").format(
            name,
            url,
            check.sha256,
            wheel.sha256,
            lock,
            CUDA_WHEELS_URL_ENV,
        )
    return ("rules_aten: cannot download {} ({} {}, the nvcc of torch {}) from {}: let Bazel " +
            "reach PyPI, or set {} to a mirror or file:// directory holding the lock's wheels, " +
            "or install a CUDA {} toolkit and point RULES_ATEN_CUDA_DIR at it; then run " +
            "`bazel sync --configure`").format(
        name,
        wheel.package,
        wheel.version,
        torch.version,
        url,
        CUDA_WHEELS_URL_ENV,
        torch.cuda.split(".")[0],
    )

def _install(rctx, torch, versions, lock):
    """{"root", "cuda", "pin", "nvcc"} of the extracted nvcc, or {"error": the one-line error}."""
    if not torch.cuda:
        return {"error": "rules_aten: torch {} is a CPU build: no CUDA version to install nvcc for".format(torch.version or "(not found)")}
    pin = toolkit_pin(rctx, torch)
    cuda, error = _entry(versions, torch, pin, lock)
    if error:
        return {"error": error}
    mirror = rctx.os.environ.get(CUDA_WHEELS_URL_ENV, "").strip().rstrip("/")
    nvcc = ""
    for wheel in versions[cuda]["wheels"]:
        url = mirror + "/" + wheel.url.split("/")[-1] if mirror else wheel.url
        done = rctx.download_and_extract(url, sha256 = wheel.sha256, type = "zip", allow_fail = True)
        if not done.success:
            return {"error": _download_error(rctx, wheel, url, torch, lock)}
        if wheel.package == "nvidia-cuda-nvcc":
            nvcc = wheel.version

    # Every wheel puts its files under nvidia/cu<major>/.
    roots = [d for d in rctx.path("nvidia").readdir() if d.get_child("bin").get_child("nvcc").exists] if rctx.path("nvidia").exists else []
    if len(roots) != 1:
        return {"error": "rules_aten: the wheels of CUDA {} in {} hold no nvidia/*/bin/nvcc; the lock lacks nvidia-cuda-nvcc".format(cuda, lock)}
    return {"root": str(roots[0]), "cuda": cuda, "pin": pin, "nvcc": nvcc}

# The repository's BUILD file, written as it is.
_BUILD = Label("//rules/private/templates:cuda_nvcc_pypi.BUILD.tpl")

def _cuda_nvcc_pypi_impl(rctx):
    # Resolved before anything runs: Bazel restarts a repository function from the top at the
    # first label it has not resolved yet, which would download the wheels again.
    rctx.path(_BUILD)
    torch = torch_defs(rctx)
    lock = str(rctx.attr.lock)
    versions = parse_lock(rctx.read(rctx.path(rctx.attr.lock)), lock)
    result = _install(rctx, torch, versions, lock)
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    rctx.file("nvcc.json", json.encode(result) + "\n", executable = False)
    rctx.file("BUILD.bazel", rctx.read(rctx.path(_BUILD)), executable = False)

cuda_nvcc_pypi_repo = repository_rule(
    implementation = _cuda_nvcc_pypi_impl,
    doc = "nvcc from PyPI at the torch wheel's CUDA version, for @local_cuda (see the file's doc).",
    attrs = {
        "lock": attr.label(
            default = Label("//third_party:cuda_nvcc_wheels.lock"),
            allow_single_file = True,
            doc = "The lock of the nvcc wheels of each CUDA version.",
        ),
    },
    environ = [CUDA_WHEELS_URL_ENV],
    # Not local: the wheels are extracted once per output base, not at every Bazel server start.
    # `bazel sync --configure` fetches it again (after a download that failed).
    configure = True,
)

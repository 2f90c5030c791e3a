"""One pure function per product, from an options object to the files to write.

- ``model_report``: ``check`` and ``dump`` (the operator model as counts or JSON lines);
- ``aten``: per-dispatch-key registration sources of an op YAML (``generate``);
- ``backend``: an external backend's kernel class header and registrations, or a lazy-tensor
  backend when its YAML asks for IR generation;
- ``lazy``: a lazy-tensor backend's IR nodes, kernels and registrations;
- ``autograd``: autograd kernels from a derivatives YAML;
- ``stable``: stable-ABI registrations of custom namespaces and a stable call API for aten.

Each returns an ``Outputs`` (render/output.py) and writes nothing: the command line prints its
warnings and report and writes its files in one all-or-nothing step. Where features are joined
(a backend with generated autograd, a backend that is lazy), it happens here, never in cli/.
"""

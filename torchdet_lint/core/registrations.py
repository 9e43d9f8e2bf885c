"""Registration APIs: calls that store a function for later (an operator kernel, an autograd
formula, a hook, an exit or signal handler) instead of calling it. A function handed to one does
not run where it is registered; the kernels and backward formulas among them run below autograd,
without a backward of their own.
"""

from __future__ import annotations

from typing import Iterable, Optional

# `torch.library` registrations whose function runs below the autograd dispatch key: a custom op's
# body (`custom_op`, `triton_op`), its kernels, its fake (meta) kernel, its backward formula
# (`register_autograd`, the `backward` and `setup_context` it is handed).
LIBRARY_KERNELS = frozenset(
    "torch.library." + name
    for name in (
        "custom_op",
        "triton_op",
        "register_kernel",
        "register_fake",
        "impl_abstract",
        "register_autograd",
        "register_torch_dispatch",
        "register_vmap",
    )
)
# `torch.library.impl(qualname, types, func)` and `Library.impl(name, fn, dispatch_key)`: below
# autograd unless the key is CompositeImplicitAutograd (whose decomposition autograd records),
# which is also what a Library created without a key registers.
LIBRARY_IMPL = "torch.library.impl"
LIBRARY_CLASS = "torch.library.Library"
LIBRARY_METHODS = frozenset({"impl", "fallback"})
# The same registrations as methods of the object `torch.library.custom_op` returns.
CUSTOM_OP_METHODS = frozenset(
    {"register_kernel", "register_fake", "register_autograd", "register_torch_dispatch", "register_vmap"}
)
# Hooks that run during the backward pass (with gradient recording off unless `create_graph=True`).
BACKWARD_HOOK_METHODS = frozenset(
    {
        "register_hook",
        "register_full_backward_hook",
        "register_backward_hook",
        "register_full_backward_pre_hook",
        "register_post_accumulate_grad_hook",
    }
)
BACKWARD_HOOK_FUNCTIONS = frozenset(
    {
        "torch.autograd.graph.register_multi_grad_hook",
        "torch.nn.modules.module.register_module_full_backward_hook",
        "torch.nn.modules.module.register_module_backward_hook",
        "torch.nn.modules.module.register_module_full_backward_pre_hook",
    }
)
# Registrations that only store the function (it runs later, elsewhere, or at exit).
STORING_FUNCTIONS = frozenset(
    {
        "atexit.register",
        "signal.signal",
        "weakref.finalize",
        "faulthandler.register",
        "torch.nn.modules.module.register_module_forward_hook",
        "torch.nn.modules.module.register_module_forward_pre_hook",
        "torch.nn.modules.module.register_module_buffer_registration_hook",
        "torch.nn.modules.module.register_module_module_registration_hook",
        "torch.nn.modules.module.register_module_parameter_registration_hook",
    }
)
# Dispatch keys whose kernels run below autograd (`torch.library.impl(..., "cuda")`, "Autograd", ...).
_BELOW_AUTOGRAD_KEYS = frozenset(
    {"cpu", "cuda", "meta", "mps", "xpu", "CPU", "CUDA", "Meta", "MPS", "XPU", "CompositeExplicitAutograd", "Autograd"}
)
COMPOSITE_IMPLICIT = "CompositeImplicitAutograd"


def stores_functions(qualified: Optional[str], attribute: Optional[str], library_receiver: bool = False) -> bool:
    """A call that stores the functions handed to it instead of calling them: the torch.library
    registrations (`Library.impl`/`fallback` when the receiver is known to be a Library), hooks
    (`register_*hook` methods and functions), `atexit.register`, `signal.signal`,
    `weakref.finalize`."""
    if qualified is not None:
        if qualified in LIBRARY_KERNELS or qualified in STORING_FUNCTIONS or qualified in BACKWARD_HOOK_FUNCTIONS:
            return True
        if qualified == LIBRARY_IMPL:
            return True
        return False
    if attribute is None:
        return False
    return (
        (attribute.startswith("register_") and attribute.endswith("hook"))
        or attribute in CUSTOM_OP_METHODS
        or (library_receiver and attribute in LIBRARY_METHODS)
    )


def below_autograd_key(keys: Iterable[object]) -> Optional[bool]:
    """Whether the dispatch keys named by an `impl` registration's literal arguments run below
    autograd: False for CompositeImplicitAutograd, True for a known kernel key, None when no
    key is visible (the library's own key decides)."""
    found = None
    for key in keys:
        if not isinstance(key, str):
            continue
        if key == COMPOSITE_IMPLICIT:
            return False
        if key in _BELOW_AUTOGRAD_KEYS or key.startswith("Autograd"):
            found = True
    return found

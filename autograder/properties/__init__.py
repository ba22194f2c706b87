"""Hidden properties, one module per exercise; importing this package registers them all."""
import importlib
import pkgutil

from ._harness import REGISTRY, Property, Student  # noqa: F401


def load_all():
    """Import every property module (idempotent) and return the registry."""
    for m in pkgutil.iter_modules(__path__):
        if not m.name.startswith("_") and m.name != "strategies":
            importlib.import_module(f"{__name__}.{m.name}")
    return REGISTRY

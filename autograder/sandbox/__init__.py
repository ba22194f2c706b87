from .runner import ForkRunner, InProcessRunner  # noqa: F401

"""Each exercise's probes, one module per exercise (as autograder/properties/): importing this
package registers them all in registry.PROBES."""

from . import (  # noqa: F401
    ablation,
    attention,
    bert_masking,
    masked_loss,
    masks,
    positional_encoding,
    recurrent,
    rope,
    timeseries,
    tiny_lm,
)

"""Each exercise's probes, one module per exercise (as autograder/properties/): importing this
package registers them all in registry.PROBES."""
from . import (ablation, attention, bert_masking, masked_loss, masks, positional_encoding,  # noqa: F401
               recurrent, rope, timeseries, tiny_lm)

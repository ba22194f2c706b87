# exercise: bert_masking
# diagnosis: bm_special_only_first_id
# A loop version: only the first special id is looked at ("the padding is what must not be masked").
import torch


def special_tokens_mask(input_ids, special_ids):
    B, T = input_ids.shape
    out = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        for t in range(T):
            if int(input_ids[b, t]) == special_ids[0]:
                out[b, t] = True
    return out


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(input_ids.shape, generator=g)
    v = torch.rand(input_ids.shape, generator=g)
    r = torch.randint(vocab_size, input_ids.shape, generator=g)
    sel = (u < 0.15) & torch.logical_not(special_tokens_mask(input_ids, special_ids))
    inputs = torch.where(sel & (v < 0.8), mask_id, input_ids)
    inputs = torch.where(sel & (v >= 0.8) & (v < 0.9), r, inputs)
    labels = torch.where(sel, input_ids, -100)
    return inputs, labels

# exercise: bert_masking
# diagnosis: bm_labels_everywhere
# HuggingFace-style, but `labels[~masked] = -100` was forgotten: labels are a plain copy.
import torch


def special_tokens_mask(input_ids, special_ids):
    out = torch.zeros_like(input_ids, dtype=torch.bool)
    for s in special_ids:
        out |= input_ids == s
    return out


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    labels = input_ids.clone()
    p = torch.full(labels.shape, 0.15)
    p.masked_fill_(special_tokens_mask(input_ids, special_ids), 0.0)
    masked = torch.bernoulli(p, generator=g).bool()
    inputs = input_ids.clone()
    rep = torch.bernoulli(torch.full(labels.shape, 0.8), generator=g).bool() & masked
    inputs[rep] = mask_id
    rnd = torch.bernoulli(torch.full(labels.shape, 0.5), generator=g).bool() & masked & ~rep
    inputs[rnd] = torch.randint(vocab_size, labels.shape, generator=g)[rnd]
    return inputs, labels

# exercise: bert_masking
# diagnosis: bm_global_rng
# The seed is set on a generator that is never passed: every draw uses the global state.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)  # noqa: F841 - never used
    labels = input_ids.clone()
    prob = torch.full(input_ids.shape, 0.15).masked_fill(special_tokens_mask(input_ids, special_ids), 0.0)
    masked = torch.bernoulli(prob).bool()
    labels[~masked] = -100
    inputs = input_ids.clone()
    rep = torch.bernoulli(torch.full(input_ids.shape, 0.8)).bool() & masked
    inputs[rep] = mask_id
    rnd = torch.bernoulli(torch.full(input_ids.shape, 0.5)).bool() & masked & ~rep
    inputs[rnd] = torch.randint(vocab_size, input_ids.shape)[rnd]
    return inputs, labels

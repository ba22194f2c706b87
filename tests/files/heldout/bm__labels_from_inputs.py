# exercise: bert_masking
# diagnosis: bm_labels_are_corrupted_inputs
# The replacement is done first, and the labels are copied from the replaced tensor.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    sel = (torch.rand(B, T, generator=g) < 0.15) & ~special_tokens_mask(input_ids, special_ids)
    u = torch.rand(B, T, generator=g)
    inputs = input_ids.clone()
    inputs[sel & (u < 0.8)] = mask_id
    r = sel & (u >= 0.8) & (u < 0.9)
    inputs[r] = torch.randint(0, vocab_size, (B, T), generator=g)[r]
    labels = inputs.clone()
    labels[~sel] = -100
    return inputs, labels

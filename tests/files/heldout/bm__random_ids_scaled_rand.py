# exercise: bert_masking
# diagnosis: bm_random_never_last_id
# Random ids as floor(u * (V - 1)): the last id of the vocabulary can never come up.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.as_tensor(special_ids, dtype=input_ids.dtype))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    shape = input_ids.shape
    selected = (torch.rand(shape, generator=g) < 0.15) & ~special_tokens_mask(input_ids, special_ids)
    fate = torch.rand(shape, generator=g)
    random_ids = (torch.rand(shape, generator=g) * (vocab_size - 1)).long()
    inputs = input_ids.clone()
    inputs[selected & (fate < 0.8)] = mask_id
    swap = selected & (fate >= 0.8) & (fate < 0.9)
    inputs[swap] = random_ids[swap]
    labels = torch.full_like(input_ids, -100)
    labels[selected] = input_ids[selected]
    return inputs, labels

# exercise: bert_masking
# diagnosis: bm_one_random_token
# One random word is drawn (an int) and put at every "random" position.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    labels = input_ids.clone()
    p = torch.full(labels.shape, 0.15).masked_fill(special_tokens_mask(input_ids, special_ids), 0.0)
    masked = torch.bernoulli(p, generator=g).bool()
    labels[~masked] = -100
    inputs = input_ids.clone()
    rep = torch.bernoulli(torch.full(labels.shape, 0.8), generator=g).bool() & masked
    inputs[rep] = mask_id
    rnd = torch.bernoulli(torch.full(labels.shape, 0.5), generator=g).bool() & masked & ~rep
    word = int(torch.randint(vocab_size, (1,), generator=g))
    inputs[rnd] = word
    return inputs, labels

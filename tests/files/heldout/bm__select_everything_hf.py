# exercise: bert_masking
# diagnosis: bm_padding_selected
# HuggingFace-style, but the special tokens are never taken out of the probability matrix.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    labels = input_ids.clone()
    probability_matrix = torch.full(labels.shape, 0.15)
    masked = torch.bernoulli(probability_matrix, generator=g).bool()
    labels[~masked] = -100
    inputs = input_ids.clone()
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8), generator=g).bool() & masked
    inputs[replaced] = mask_id
    randomised = torch.bernoulli(torch.full(labels.shape, 0.5), generator=g).bool() & masked & ~replaced
    words = torch.randint(vocab_size, labels.shape, generator=g)
    inputs[randomised] = words[randomised]
    return inputs, labels

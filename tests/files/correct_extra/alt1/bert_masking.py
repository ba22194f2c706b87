"""Correct, written differently: HuggingFace's DataCollatorForLanguageModeling (bernoulli 0.15, 0.8, then 0.5)."""
import torch


def special_tokens_mask(input_ids, special_ids):
    out = torch.zeros_like(input_ids, dtype=torch.bool)
    for s in special_ids:
        out = out | (input_ids == s)
    return out


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    labels = input_ids.clone()
    probability_matrix = torch.full(labels.shape, 0.15)
    probability_matrix.masked_fill_(special_tokens_mask(input_ids, special_ids), value=0.0)
    masked_indices = torch.bernoulli(probability_matrix, generator=g).bool()
    labels[~masked_indices] = -100
    inputs = input_ids.clone()
    indices_replaced = torch.bernoulli(torch.full(labels.shape, 0.8), generator=g).bool() & masked_indices
    inputs[indices_replaced] = mask_id
    indices_random = torch.bernoulli(torch.full(labels.shape, 0.5), generator=g).bool() & masked_indices & ~indices_replaced
    random_words = torch.randint(vocab_size, labels.shape, dtype=torch.long, generator=g)
    inputs[indices_random] = random_words[indices_random]
    return inputs, labels

"""Training experiments: small, seeded models trained on a CPU in seconds, for the pages.

Not part of ``attention_ref``'s API (``attention_ref.__all__``); import the modules by name:

- ``attention_ref.lab.toy_tasks``: a toy task one attention layer solves only by attending,
  so its trained weights become readable (Visualizing attention);
- ``attention_ref.lab.length_generalization``: which positional encodings carry past the
  trained length (Positions);
- ``attention_ref.lab.cache_positions``: decoding with StreamingLLM's positions within a
  rolling cache (Attention in today's models);
- ``attention_ref.lab.layernorm_placement``: Pre-LN against Post-LN, each layer's gradient at
  initialization and the loss without warm-up (Exercises);
- ``attention_ref.lab.attention_maps``: the weights of the models above and of the decoding
  page's counting decoder, and a gallery of masks under ALiBi, for the attention explorer
  (Visualizing attention);
- ``attention_ref.lab.training``: what they share: seeded weights, one CPU thread, Adam.
"""

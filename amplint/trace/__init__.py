"""`amplint trace`: record what a user's own script really computes in float16.

The static check says what *can* run in float16; a trace says what *did*, on
the user's data, once. `command` runs the script in a child interpreter whose
first module is `bootstrap`; `recorder` hooks torch there (a TorchFunctionMode
for hand-written math, `torchpatch` for distributions, shared with the guard);
`records` turns what it saw into `amplint check`'s JSON shape; `compare` sets a
trace beside static findings. Only `command` and `compare` run inside amplint's
own process; the rest must import nothing but the standard library and torch.
"""

"""What the properties check beyond a function's values, on both sides of the sandbox:

elsewhere.py   a device that is not the CPU (the real GPU or a simulated one), for the
               contract's device sentences
rngstate.py    a digest of the global random states (does a function draw from them?)
"""

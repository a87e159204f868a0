# SPDX-License-Identifier: MIT
"""A CartPole collector in Python for the C++ learner of `--package cartpole` (docs/python.md,
"A mixed job"): the learner broadcasts the policy's weights ("RLW1" bytes), each collector runs
one episode with them and sends the trajectory back ("RLT1" bytes). The environment, the policy
(4-128-2 with dropout 0.6 while acting) and the random streams are the C++ collector's, so the
learner can replay the episode's dropout masks from its seed.

    ditask --package collector.py --main collector.main --node-ids 1 --parallel-workers 3 \\
        --world-size 4 --roles learner:0,collector:1- --rendezvous file:///tmp/cartpole --run-id cp
"""
import math
import struct
import sys
import threading

import numpy as np

from ditask import task

MASK = (1 << 64) - 1
DROPOUT = 0.6
KEEP = np.float32(1.0) / (np.float32(1.0) - np.float32(DROPOUT))


class Rng:
    """SplitMix64, as the C++ examples' rl::Rng (the same stream on every platform)."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self, lo=0.0, hi=1.0):
        return lo + (hi - lo) * ((self.next() >> 11) * 2.0**-53)

    @staticmethod
    def derive(seed, a, b=0, c=0):
        r = Rng(seed ^ ((a * 0xD1B54A32D192ED03) & MASK) ^ ((b * 0xABC98388FB8FAC03) & MASK)
                ^ ((c * 0x8CB92BA72F3D8DD7) & MASK))
        r.next()
        return r.next()


class CartPole:
    """CartPole-v1 as Gym's classic control has it."""

    GRAVITY, MASS_CART, MASS_POLE, HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    TOTAL_MASS = MASS_CART + MASS_POLE
    POLE_MASS_LENGTH = MASS_POLE * HALF_LENGTH
    THETA_LIMIT = 12.0 * 2.0 * 3.14159265358979323846 / 360.0
    X_LIMIT, MAX_STEPS = 2.4, 500

    def __init__(self, seed):
        self.rng = Rng(seed)

    def reset(self):
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.steps = 0
        return list(self.state)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.FORCE if action == 1 else -self.FORCE
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + self.POLE_MASS_LENGTH * theta_dot * theta_dot * sin) / self.TOTAL_MASS
        theta_acc = (self.GRAVITY * sin - cos * temp) / (
            self.HALF_LENGTH * (4.0 / 3.0 - self.MASS_POLE * cos * cos / self.TOTAL_MASS))
        x_acc = temp - self.POLE_MASS_LENGTH * theta_acc * cos / self.TOTAL_MASS
        self.state = [x + self.TAU * x_dot, x_dot + self.TAU * x_acc, theta + self.TAU * theta_dot,
                      theta_dot + self.TAU * theta_acc]
        self.steps += 1
        x, theta = self.state[0], self.state[2]
        terminated = x < -self.X_LIMIT or x > self.X_LIMIT or theta < -self.THETA_LIMIT or theta > self.THETA_LIMIT
        return list(self.state), terminated or self.steps >= self.MAX_STEPS


class Policy:
    """4-128-2: Linear, dropout and ReLU, Linear; the flat float32 parameters of the C++ Mlp
    (per layer the weight matrix column-major, then the bias)."""

    def __init__(self, params):
        self.w0 = params[0:512].reshape(4, 128).T
        self.b0 = params[512:640]
        self.w1 = params[640:896].reshape(128, 2).T
        self.b1 = params[896:898]

    def action(self, x, masks, rng):
        z = self.w0 @ x + self.b0
        mask = (z > 0).astype(np.float32)
        for i in range(128):
            mask[i] *= np.float32(0.0) if masks.uniform() < DROPOUT else KEEP
        logits = self.w1 @ (z * mask) + self.b1
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return 0 if rng.uniform() < float(p[0]) else 1


def decode_weights(data):
    magic, version, count = struct.unpack_from("<4sII", data)
    assert magic == b"RLW1" and len(data) == 12 + 4 * count, "malformed weights"
    return version, np.frombuffer(data, dtype="<f4", count=count, offset=12).astype(np.float32)


def run_episode(policy, seed, node, version):
    env = CartPole(Rng.derive(seed, node, version))
    rng = Rng(Rng.derive(seed, node, version, 1))
    mask_seed = Rng.derive(seed, node, version, 2)
    masks = Rng(mask_seed)
    state = env.reset()
    steps = []
    while True:
        x = np.array(state, dtype=np.float32)
        action = policy.action(x, masks, rng)
        steps.append((x, action))
        state, done = env.step(action)
        if done:
            break
    out = bytearray(struct.pack("<4sIQI", b"RLT1", version, mask_seed, len(steps)))
    for x, action in steps:
        out += x.astype("<f4").tobytes() + bytes([action])
    out += struct.pack("<%df" % len(steps), *([1.0] * len(steps)))
    return bytes(out)


def main():
    seed = 0
    for arg in sys.argv[1:]:
        if arg.startswith("seed="):
            seed = int(arg[5:])
    inbox = {"weights": None, "finished": False}
    changed = threading.Condition()

    def on_weights(data):
        version, params = decode_weights(data)
        with changed:
            if inbox["weights"] is None or version >= inbox["weights"][0]:
                inbox["weights"] = (version, params)
            changed.notify()

    def on_finish(*args, **kwargs):
        with changed:
            inbox["finished"] = True
            changed.notify()

    with task.start():
        me = task.router.node_id
        task.on("weights", on_weights)
        task.on("finish", on_finish)
        task.ready()
        last = None
        episodes = 0
        while True:
            with changed:
                changed.wait_for(lambda: inbox["finished"] or (inbox["weights"] and inbox["weights"][0] != last))
                if inbox["finished"]:
                    break
                version, params = inbox["weights"]
            last = version
            task.emit_to_role("learner", "trajectory", me, run_episode(Policy(params), seed, me, version))
            episodes += 1
        print("collector %d (Python): %d episodes" % (me, episodes))

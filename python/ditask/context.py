# SPDX-License-Identifier: MIT
"""The per-step state middleware shares (DI-engine's Context and OnlineRLContext)."""


class Context(dict):
    """A dict whose keys are also attributes. ``renew()`` starts the next step: a fresh context
    with ``total_step + 1`` that carries over only the keys given to ``keep()``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.setdefault("total_step", 0)
        object.__setattr__(self, "_kept_keys", set())

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"'{type(self).__name__}' has no attribute '{key}'") from None

    def __setattr__(self, key, value):
        self[key] = value

    def __delattr__(self, key):
        del self[key]

    def keep(self, *keys):
        """Marks keys that survive renew()."""
        self._kept_keys.update(keys)

    def renew(self):
        """The next step's context: total_step + 1, the kept keys copied, the rest reset."""
        ctx = type(self)()
        ctx.total_step = self.total_step + 1
        for key in self._kept_keys:
            if key in self:
                ctx[key] = self[key]
        ctx.keep(*self._kept_keys)
        return ctx


class OnlineRLContext(Context):
    """A Context that keeps env_step, env_episode, train_iter, last_eval_iter and last_eval_value."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key, value in (("env_step", 0), ("env_episode", 0), ("train_iter", 0), ("last_eval_iter", -1),
                           ("last_eval_value", float("-inf"))):
            self.setdefault(key, value)
        self.keep("env_step", "env_episode", "train_iter", "last_eval_iter", "last_eval_value")

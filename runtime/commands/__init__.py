"""The worker's commands: ``headwater standalone`` and ``headwater distributed`` (:mod:`.cli`), their start-up
(:mod:`.startup`: the broker check, the REST and metrics servers), the standalone worker's state directory, and the
container image's entry point (:mod:`.container`). Nothing below imports this package."""

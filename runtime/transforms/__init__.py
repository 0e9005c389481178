"""Single Message Transforms and predicates (KIP-66, KIP-585): a connector config's chain, its keys, and the
built-ins."""

from headwater.runtime.config.transform_keys import CHAIN_CONFIG
from headwater.runtime.transforms.chain import TransformationChain, TransformStage
from headwater.runtime.transforms.stages import build_chain, chain_definition, chain_errors

__all__ = ["CHAIN_CONFIG", "TransformStage", "TransformationChain", "build_chain", "chain_definition", "chain_errors"]

"""hvd.compression, as horovod.torch.compression: Compression (hoop's wire compression:
Compression.none, .fp16, .bf16; the tensor keeps its dtype and only what travels is narrower),
and Horovod's Compressor interface for compressors of one's own. An object with
compress(tensor) -> (compressed, ctx) and decompress(tensor, ctx) given as compression= to
allreduce (in all its forms) or DistributedOptimizer is applied around the reduction, as Horovod
applies it: the compressed tensor is what is reduced, then decompressed into the output.
NoneCompressor and FP16Compressor are Horovod's two (FP16Compressor casts floating-point tensors
to float16 and back, unlike Compression.fp16, which keeps them and compresses on the wire).
"""
import torch

from .horovod import Compression

__all__ = ["Compression", "Compressor", "NoneCompressor", "FP16Compressor"]


class Compressor:
    """Horovod's interface: compress(tensor) -> (tensor, ctx); decompress(tensor, ctx) -> tensor."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """The tensor as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Floating-point tensors reduced as float16 (a cast), given back in their own dtype."""

    @staticmethod
    def compress(tensor):
        return (tensor.to(torch.float16) if tensor.dtype.is_floating_point else tensor), tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        return tensor.to(ctx) if ctx.is_floating_point else tensor

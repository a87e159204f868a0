#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The PyTorch side of `scripts/bench.sh autograd`: the PyTorch RPC tutorial's distributed RNN
# iteration (forward through the parameter server, dist_autograd.backward, DistributedOptimizer
# step, the context's end) on two ranks over TensorPipe on 127.0.0.1, and the same model in this
# one process, with Debian 12's python3-torch 1.13. Prints one line:
#   pytorch_rnn_bench iteration dist_p50_us=.. dist_p99_us=.. local_p50_us=.. init_rpc_s=..
# Usage: /usr/bin/python3 pytorch_rnn_bench.py ROUNDS WARMUP PORT
import os
import sys
import time

import torch
import torch.distributed.autograd as dist_autograd
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.distributed.optim import DistributedOptimizer

NTOKEN, NINP, NHID, NINDICES, NLAYERS, BATCH, DROPOUT = 10, 2, 3, 3, 4, 5, 0.5


class EmbeddingTable(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(DROPOUT)
        self.encoder = nn.Embedding(NTOKEN, NINP)

    def forward(self, input):
        return self.drop(self.encoder(input))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(DROPOUT)
        self.decoder = nn.Linear(NHID, NTOKEN)

    def forward(self, output):
        return self.decoder(self.drop(output))


def _call_method(method, rref, *args):
    return method(rref.local_value(), *args)


def _remote_method(method, rref, *args):
    return rpc.rpc_sync(rref.owner(), _call_method, args=[method, rref] + list(args))


def _param_rrefs(rref):
    return [rpc.RRef(p) for p in rref.local_value().parameters()]


def percentile(values, p):
    values = sorted(values)
    return values[int(p * (len(values) - 1))]


def batches():
    torch.manual_seed(1)
    return [(torch.randint(0, NTOKEN, (BATCH, NINDICES)), torch.randint(0, NINDICES, (BATCH, NTOKEN)))
            for _ in range(16)]


def distributed(rounds, warmup):
    emb = rpc.remote("ps", EmbeddingTable)
    lstm = nn.LSTM(NINP, NHID, NLAYERS, dropout=DROPOUT)
    dec = rpc.remote("ps", Decoder)
    params = rpc.rpc_sync("ps", _param_rrefs, args=(emb,))
    params += [rpc.RRef(p) for p in lstm.parameters()]
    params += rpc.rpc_sync("ps", _param_rrefs, args=(dec,))
    opt = DistributedOptimizer(optim.SGD, params, lr=0.05)
    hidden = (torch.zeros(NLAYERS, NINDICES, NHID), torch.zeros(NLAYERS, NINDICES, NHID))
    data = batches()
    took = []
    for i in range(warmup + rounds):
        x, y = data[i % len(data)]
        start = time.perf_counter()
        with dist_autograd.context() as context_id:
            hidden = (hidden[0].detach(), hidden[1].detach())
            embedded = _remote_method(EmbeddingTable.forward, emb, x)
            output, hidden = lstm(embedded, hidden)
            decoded = _remote_method(Decoder.forward, dec, output)
            loss = nn.CrossEntropyLoss()(decoded, y)
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)
        if i >= warmup:
            took.append((time.perf_counter() - start) * 1e6)
    return took


def local(rounds, warmup):
    emb, lstm, dec = EmbeddingTable(), nn.LSTM(NINP, NHID, NLAYERS, dropout=DROPOUT), Decoder()
    opt = optim.SGD(list(emb.parameters()) + list(lstm.parameters()) + list(dec.parameters()), lr=0.05)
    hidden = (torch.zeros(NLAYERS, NINDICES, NHID), torch.zeros(NLAYERS, NINDICES, NHID))
    data = batches()
    took = []
    for i in range(warmup + rounds):
        x, y = data[i % len(data)]
        start = time.perf_counter()
        hidden = (hidden[0].detach(), hidden[1].detach())
        opt.zero_grad()
        output, hidden = lstm(emb(x), hidden)
        loss = nn.CrossEntropyLoss()(dec(output), y)
        loss.backward()
        opt.step()
        if i >= warmup:
            took.append((time.perf_counter() - start) * 1e6)
    return took


def run(rank, rounds, warmup, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    start = time.perf_counter()
    rpc.init_rpc("trainer" if rank == 0 else "ps", rank=rank, world_size=2)
    init_s = time.perf_counter() - start
    if rank == 0:
        dist = distributed(rounds, warmup)
        near = local(rounds, warmup)
        print("pytorch_rnn_bench iteration dist_p50_us=%.1f dist_p99_us=%.1f local_p50_us=%.1f init_rpc_s=%.2f"
              % (percentile(dist, 0.5), percentile(dist, 0.99), percentile(near, 0.5), init_s), flush=True)
    rpc.shutdown()


if __name__ == "__main__":
    torch.set_num_threads(1)
    rounds, warmup, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    mp.spawn(run, args=(rounds, warmup, port), nprocs=2, join=True)

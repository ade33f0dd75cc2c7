"""Logs written for the diagnosis tests: a realistic failure with secrets planted in it."""

from __future__ import annotations

PLANTED_SECRETS = {
    "hf_token": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
    "aws_key": "AKIAQWERTYUIOPASDFGH",
    "email": "jane.doe@contoso-research.com",
    "user": "janedoe",
    "host": "gpu-node-17.contoso-research.com",
    "ip": "10.42.7.19",
}

OOM_LOG = """\
[2026-11-30 10:00:01] INFO launching on {host} ({ip}) as {user}
export HF_TOKEN={hf_token}
AWS_ACCESS_KEY_ID={aws_key}
wandb: Currently logged in as: {email}
Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00,  1.60s/it]
step 1 loss 2.3013 lr 1.0e-05
Traceback (most recent call last):
  File "/home/{user}/work/train.py", line 212, in <module>
    main()
  File "/home/{user}/work/train.py", line 188, in main
    optimizer.step()
  File "/home/{user}/.venv/lib/python3.11/site-packages/torch/optim/optimizer.py", line 487, in wrapper
    out = func(*args, **kwargs)
  File "/home/{user}/.venv/lib/python3.11/site-packages/torch/optim/adamw.py", line 220, in step
    adamw(
  File "/home/{user}/.venv/lib/python3.11/site-packages/torch/optim/adamw.py", line 606, in _multi_tensor_adamw
    exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 87.19 MiB is free. Including non-PyTorch memory, this process has 79.06 GiB memory in use. Of the allocated memory 77.80 GiB is allocated by PyTorch, and 612.50 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
""".format(**PLANTED_SECRETS)

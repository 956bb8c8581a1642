# On the board (train.train_on_board), after train_prepare.py in the same session: TD3 on
# Pendulum, streaming 'P step return mem_free' lines, then the trained actor's float32 weights as
# 'W hex' lines (no policy code or file on the board); 'N step' instead when the actor's weights
# became NaN or infinite (nothing sent). TD3 allocates the replay buffer (the biggest block)
# first, while the heap is still whole.
gc.collect()
agent = TD3(Pendulum(), TD3Config(hidden=HIDDEN, batch=BATCH, replay_capacity=REPLAY, warmup=WARMUP, steps=STEPS, replay_overwrite=OVERWRITE), SEED)
gc.collect()
print('M', gc.mem_free())
last = None
for step in range(1, STEPS + 1):
    r = agent.step()
    if r is not None:
        last = r
    if r is not None or step % EVERY == 0 or step == STEPS:
        bad = False
        for v in agent.actor.params:
            if v - v != 0.0:  # NaN or infinite: the run diverged; stop, write nothing
                bad = True
                break
        if bad:
            print('N', step)
            break
        print('P', step, 'nan' if last is None else last, gc.mem_free())
else:
    agent.replay = None
    from binascii import hexlify
    mv = memoryview(agent.actor.params)
    for i in range(0, len(mv), 16):
        print('W', hexlify(mv[i:i + 16]).decode())
    print('D')

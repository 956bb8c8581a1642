# On the board (train.train_on_board), after train_prepare.py in the same session: TD3 on
# Pendulum, streaming 'P step return mem_free' lines, then saving the policy to OUT; 'N step'
# instead when the actor's weights became NaN or infinite (nothing saved).
# TD3 allocates the replay buffer (the biggest block) first, while the heap is still whole.
gc.collect()
agent = TD3(Pendulum(), TD3Config(hidden=HIDDEN, batch=BATCH, replay_capacity=REPLAY, warmup=WARMUP, steps=STEPS), SEED)
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
    save(OUT, agent.policy())
    print('D')

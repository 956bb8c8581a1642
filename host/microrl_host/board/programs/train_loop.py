# On the board (train.train_on_board), after train_build.py in the same session: `agent` trains
# for STEPS steps, streaming 'P step return mem_free' lines, then the trained actor's float32
# weights as 'W hex' lines and 'D' (no policy code or file on the board); 'N step what' instead
# when a network's weights (what: actor, critic) or the actor's action became NaN or infinite
# (nothing sent).
def non_finite(agent):
    # the critics too: a diverged critic can leave the actor finite (no gradient through a NaN
    # relu); the last action too: finite weights near float32's limit overflow in the forward pass
    for name, values in (('actor', agent.actor.params), ('critic', agent.critics[0].params), ('critic', agent.critics[1].params),
                         ('action', agent.action)):
        for v in values:
            if v - v != 0.0:  # NaN or infinite
                return name
    return None


last = None
for step in range(1, STEPS + 1):
    try:
        r = agent.step()
    except (ValueError, OverflowError, ZeroDivisionError):
        # a NaN or infinite action cannot be stored in the replay's 16-bit rows: a divergence
        # if the networks went non-finite, else a real failure (the host reports it)
        bad = non_finite(agent)
        if bad is None:
            raise
        print('N', step, bad)
        break
    if r is not None:
        last = r
    if r is not None or step % EVERY == 0 or step == STEPS:
        bad = non_finite(agent)
        if bad is not None:  # the run diverged: stop, write nothing
            print('N', step, bad)
            break
        print('P', step, 'nan' if last is None else last, gc.mem_free())
else:
    agent.replay = None
    from binascii import hexlify
    mv = memoryview(agent.actor.params)
    for i in range(0, len(mv), 16):
        print('W', hexlify(mv[i:i + 16]).decode())
    print('D')

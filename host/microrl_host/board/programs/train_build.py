# On the board (train.train_on_board), after train_prepare.py in the same session: TD3 on the
# task imported there (`task`), its replay buffer (the biggest block) allocated first, while the
# heap is still whole; then 'M mem_free'. What runs next starts from `agent` (train_loop.py).
gc.collect()
agent = TD3(Env(task), TD3Config(hidden=HIDDEN, batch=BATCH, replay_capacity=REPLAY, warmup=WARMUP, steps=STEPS, 
                                 actor_lr=ACTOR_LR, critic_lr=CRITIC_LR, **LEARNING), SEED)
gc.collect()
print('M', gc.mem_free())

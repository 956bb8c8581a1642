# On the board (deploy.board_task_info, train-on-board): the constants of the task TASK (a module
# of microrl.tasks) as the board's own copy has them; numbers that are not finite as None.
def _finite(v):
    if isinstance(v, (tuple, list)):
        return tuple(_finite(x) for x in v)
    if isinstance(v, float) and v - v != 0.0:
        return None
    return v


task = __import__('microrl.tasks.' + TASK, None, None, (TASK,))
_info = {k: _finite(getattr(task, k, None)) for k in ('NAME', 'OBS_DIM', 'ACT_DIM', 'ACTION_LOW', 'ACTION_HIGH', 'STATE_DIM', 'RESET_DRAWS', 'STEP_DRAWS',
                                                     'EPISODE_STEPS', 'OBS_HIGH', 'REWARD_BOUND', 'DT', 'ERROR_NAME', 'TERMINATED_NAME')}
_info['PARAM_DIM'] = len(task.PARAMETERS)
_info['has_success'] = hasattr(task, 'success')
_info['has_final_error'] = hasattr(task, 'final_error')
print('T', repr(_info))
_info = None

from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'functionalize_kernels.cpp.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_find = l_0_callee = l_0_mutation = l_0_view_lambda = l_0_view = l_0_view_copy = missing
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    pass
    def macro(l_1_var, l_1_op):
        t_2 = []
        if l_1_var is missing:
            l_1_var = undefined("parameter 'var' was not provided", name='var')
        if l_1_op is missing:
            l_1_op = undefined("parameter 'op' was not provided", name='op')
        pass
        t_2.extend((
            'static const auto ',
            str(l_1_var),
            ' = atengen::find_op<',
            str(environment.getattr(l_1_op, 'cpp_type')),
            '>("',
            str(environment.getattr(l_1_op, 'name')),
            '", "',
            str(environment.getattr(l_1_op, 'overload')),
            '");',
        ))
        return concat(t_2)
    context.exported_vars.add('find')
    context.vars['find'] = l_0_find = Macro(environment, macro, 'find', ('var', 'op'), False, False, False, context.eval_ctx.autoescape)
    def macro(l_1_var, l_1_op):
        t_3 = []
        if l_1_var is missing:
            l_1_var = undefined("parameter 'var' was not provided", name='var')
        if l_1_op is missing:
            l_1_op = undefined("parameter 'op' was not provided", name='op')
        pass
        t_3.append(
            str((environment.getattr(l_1_op, 'aten_call') if environment.getattr(l_1_op, 'aten_call') else (l_1_var + '.call'))),
        )
        return concat(t_3)
    context.exported_vars.add('callee')
    context.vars['callee'] = l_0_callee = Macro(environment, macro, 'callee', ('var', 'op'), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro(l_1_w):
        t_4 = []
        l_1_z = missing
        if l_1_w is missing:
            l_1_w = undefined("parameter 'w' was not provided", name='w')
        pass
        l_1_z = environment.getattr(l_1_w, 'fz')
        if (not environment.getattr(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'op'), 'aten_call')):
            pass
            t_4.extend((
                '  ',
                str(context.call((undefined(name='find') if l_0_find is missing else l_0_find), 'atg_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'op'))),
                '\n',
            ))
        if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'meta_check_args'):
            pass
            t_4.append(
                '  if (!atengen::fz::meta_reference_disabled()) {\n    // Shape errors of the inplace op (broadcasting into self) must still raise.\n    atengen::fz::MetaComputeGuard atg_meta_guard;\n',
            )
            for l_2_a in environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'meta_converted'):
                _loop_vars = {}
                pass
                t_4.extend((
                    '    auto atg_m_',
                    str(l_2_a),
                    ' = atengen::fz::to_meta(',
                    str(l_2_a),
                    ');\n',
                ))
            l_2_a = missing
            t_4.extend((
                '    ',
                str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'op'))),
                '(',
                str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'meta_check_args'), ', ')),
                ');\n  }\n',
            ))
        for l_2_a in environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'unwrapped'):
            _loop_vars = {}
            pass
            t_4.extend((
                '  auto atg_u_',
                str(l_2_a),
                ' = atengen::fz::unwrap(',
                str(l_2_a),
                ', /*sync=*/true);\n',
            ))
        l_2_a = missing
        t_4.append(
            '  if (!(true',
        )
        for l_2_a in environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'mutated'):
            _loop_vars = {}
            pass
            t_4.extend((
                ' && atengen::fz::is_functional(',
                str(l_2_a),
                ')',
            ))
        l_2_a = missing
        t_4.append(
            ')) {\n    if (!(false',
        )
        for l_2_a in environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'xla_checked'):
            _loop_vars = {}
            pass
            t_4.extend((
                ' || atengen::fz::on_xla(',
                str(l_2_a),
                ')',
            ))
        l_2_a = missing
        t_4.append(
            ') &&\n        (false',
        )
        for l_2_a in environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'others'):
            _loop_vars = {}
            pass
            t_4.extend((
                ' || atengen::fz::is_functional(',
                str(l_2_a),
                ')',
            ))
        l_2_a = missing
        t_4.extend((
            ')) {\n      atengen::fz::fail_mixed_inputs();\n    }\n    // Nothing to functionalize: run the op itself below this key.\n    at::AutoDispatchSkipFunctionalize atg_guard;\n    ',
            str(('auto atg_result = ' if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'binds_redispatch_result') else '')),
            str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'op'))),
            '(',
            str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'redispatch_args'), ', ')),
            ');\n',
        ))
        if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'redispatch_return'):
            pass
            t_4.extend((
                '    return ',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'redispatch_return')),
                ';\n',
            ))
        else:
            pass
            t_4.append(
                '    return;\n',
            )
        t_4.append(
            '  }\n',
        )
        if (not environment.getattr(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'functional'), 'aten_call')):
            pass
            t_4.extend((
                '  ',
                str(context.call((undefined(name='find') if l_0_find is missing else l_0_find), 'atg_functional_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'functional'))),
                '\n',
            ))
        t_4.extend((
            '  auto atg_result = [&] {\n    at::AutoDispatchSkipFunctionalize atg_guard;\n    return ',
            str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_functional_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'functional'))),
            '(',
            str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'functional_args'), ', ')),
            ');\n  }();\n',
        ))
        for (l_2_arg, l_2_value) in environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'write_backs'):
            _loop_vars = {}
            pass
            t_4.extend((
                '  atengen::fz::write_back(',
                str(l_2_arg),
                ', ',
                str(l_2_value),
                ');\n',
            ))
        l_2_arg = l_2_value = missing
        if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'return_expr'):
            pass
            t_4.extend((
                '  return ',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'return_expr')),
                ';\n',
            ))
        return concat(t_4)
    context.exported_vars.add('mutation')
    context.vars['mutation'] = l_0_mutation = Macro(environment, macro, 'mutation', ('w',), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro(l_1_z):
        t_5 = []
        if l_1_z is missing:
            l_1_z = undefined("parameter 'z' was not provided", name='z')
        pass
        for l_2_a in environment.getattr(l_1_z, 'unwrapped'):
            _loop_vars = {}
            pass
            t_5.extend((
                '  auto atg_u_',
                str(l_2_a),
                ' = atengen::fz::unwrap(',
                str(l_2_a),
                ', /*sync=*/false);\n',
            ))
        l_2_a = missing
        t_5.append(
            '  auto atg_view = [',
        )
        l_2_loop = missing
        for (l_2_name, l_2_expr), l_2_loop in LoopContext(environment.getattr(l_1_z, 'captures'), undefined):
            _loop_vars = {}
            pass
            t_5.extend((
                str(l_2_name),
                ' = atengen::fz::own(',
                str(l_2_expr),
                ')',
                str((', ' if (not environment.getattr(l_2_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 61 in 'functionalize_kernels.cpp.j2' evaluated to false and no else section was defined."))),
            ))
        l_2_loop = l_2_name = l_2_expr = missing
        t_5.extend((
            '](\n      const at::Tensor& atg_base, bool atg_reapply) -> ',
            str(environment.getattr(l_1_z, 'result_type')),
            ' {\n',
        ))
        if (not environment.getattr(environment.getattr(l_1_z, 'view'), 'aten_call')):
            pass
            t_5.extend((
                '    ',
                str(context.call((undefined(name='find') if l_0_find is missing else l_0_find), 'atg_view_op', environment.getattr(l_1_z, 'view'))),
                '\n',
            ))
        if (not environment.getattr(environment.getattr(l_1_z, 'view_copy'), 'aten_call')):
            pass
            t_5.extend((
                '    ',
                str(context.call((undefined(name='find') if l_0_find is missing else l_0_find), 'atg_copy_op', environment.getattr(l_1_z, 'view_copy'))),
                '\n',
            ))
        t_5.extend((
            '    if (atg_reapply) {\n      return ',
            str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_view_op', environment.getattr(l_1_z, 'view'))),
            '(atg_base',
        ))
        for l_2_a in environment.getattr(l_1_z, 'view_args'):
            _loop_vars = {}
            pass
            t_5.extend((
                ', ',
                str(l_2_a),
            ))
        l_2_a = missing
        t_5.extend((
            ');\n    }\n    return ',
            str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_copy_op', environment.getattr(l_1_z, 'view_copy'))),
            '(atg_base',
        ))
        for l_2_a in environment.getattr(l_1_z, 'view_args'):
            _loop_vars = {}
            pass
            t_5.extend((
                ', ',
                str(l_2_a),
            ))
        l_2_a = missing
        t_5.append(
            ');\n  };\n',
        )
        if environment.getattr(l_1_z, 'reverse'):
            pass
            t_5.extend((
                '  atengen::fz::Reverse atg_reverse = [](const at::Tensor& atg_base, const at::Tensor& atg_mutated,\n                                        const at::Tensor&) {\n    // A dtype-changing view covers its whole base: reinterpret it back.\n    return ',
                str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_op', environment.getitem(environment.getattr(l_1_z, 'reverse'), 0))),
                '(',
                str(environment.getitem(environment.getattr(l_1_z, 'reverse'), 1)),
                ');\n  };\n',
            ))
        else:
            pass
            t_5.append(
                '  atengen::fz::Reverse atg_reverse = nullptr;  // scatter the view back into its base\n',
            )
        return concat(t_5)
    context.exported_vars.add('view_lambda')
    context.vars['view_lambda'] = l_0_view_lambda = Macro(environment, macro, 'view_lambda', ('z',), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro(l_1_w):
        t_6 = []
        l_1_z = missing
        if l_1_w is missing:
            l_1_w = undefined("parameter 'w' was not provided", name='w')
        pass
        l_1_z = environment.getattr(l_1_w, 'fz')
        if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'inplace'):
            pass
            t_6.extend((
                '  if (!atengen::fz::is_functional(',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ')) {\n    // Functionalization is re-entrant but does nothing for plain tensors.\n    at::AutoDispatchSkipFunctionalize atg_guard;\n',
            ))
            if (not environment.getattr(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'inplace'), 'aten_call')):
                pass
                t_6.extend((
                    '    ',
                    str(context.call((undefined(name='find') if l_0_find is missing else l_0_find), 'atg_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'inplace'))),
                    '\n',
                ))
            t_6.extend((
                '    return ',
                str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'inplace'))),
                '(',
                str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'arg_names'), ', ')),
                ');\n  }\n',
                str(context.call((undefined(name='view_lambda') if l_0_view_lambda is missing else l_0_view_lambda), (undefined(name='z') if l_1_z is missing else l_1_z))),
                '\n  atengen::fz::functionalize_inplace_view(',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ', atg_view, atg_reverse,\n      atengen::fz::any_symbolic(',
                str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'symbolic_args'), ', ')),
                '), ',
                str(('true' if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'is_as_strided') else 'false')),
                ');\n  return ',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ';\n',
            ))
        else:
            pass
            t_6.extend((
                '  auto atg_u_',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ' = atengen::fz::unwrap(',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ', /*sync=*/false);\n',
                str(context.call((undefined(name='view_lambda') if l_0_view_lambda is missing else l_0_view_lambda), (undefined(name='z') if l_1_z is missing else l_1_z))),
                '\n  return atengen::fz::functionalize_view<',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'result_type')),
                '>(',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ', atg_u_',
                str(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'self_name')),
                ',\n      atg_view, atg_reverse, atengen::fz::any_symbolic(',
                str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'symbolic_args'), ', ')),
                '),\n      ',
                str(('true' if environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'is_as_strided') else 'false')),
                ');\n',
            ))
        return concat(t_6)
    context.exported_vars.add('view')
    context.vars['view'] = l_0_view = Macro(environment, macro, 'view', ('w',), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro(l_1_w):
        t_7 = []
        l_1_z = missing
        if l_1_w is missing:
            l_1_w = undefined("parameter 'w' was not provided", name='w')
        pass
        l_1_z = environment.getattr(l_1_w, 'fz')
        if (not environment.getattr(environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'view'), 'aten_call')):
            pass
            t_7.extend((
                '  ',
                str(context.call((undefined(name='find') if l_0_find is missing else l_0_find), 'atg_view_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'view'))),
                '\n',
            ))
        t_7.extend((
            '  return atengen::materialize(',
            str(context.call((undefined(name='callee') if l_0_callee is missing else l_0_callee), 'atg_view_op', environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'view'))),
            '(',
            str(t_1(context.eval_ctx, environment.getattr((undefined(name='z') if l_1_z is missing else l_1_z), 'args'), ', ')),
            '));\n',
        ))
        return concat(t_7)
    context.exported_vars.add('view_copy')
    context.vars['view_copy'] = l_0_view_copy = Macro(environment, macro, 'view_copy', ('w',), False, False, False, context.eval_ctx.autoescape)

blocks = {}
debug_info = '3=18&4=27&6=39&7=47&10=53&11=59&12=60&13=64&15=67&19=72&20=77&22=85&25=90&26=95&28=104&29=116&30=128&35=139&36=145&37=149&42=160&43=164&47=169&49=174&50=179&52=185&53=189&57=196&58=201&59=206&61=216&62=229&63=232&64=236&66=239&67=243&70=248&72=261&74=275&78=279&85=293&86=299&87=300&88=304&91=307&92=311&94=316&96=320&97=322&98=324&99=328&101=335&102=339&103=341&104=347&105=349&109=356&110=362&111=363&112=367&114=372'

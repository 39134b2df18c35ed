import json,sys,statistics
for f in sys.argv[1:]:
    j=json.load(open(f))
    for rec in j['records']:
        s=rec['timing']['samples']
        for k in s:
            ev=s[k]['event_ms']; 
            if not ev: continue
            lo=min(ev); pat=''.join('F' if t<lo*1.05 else 'S' for t in ev)
            print(f, rec.get('candidate_name'), k, 'med %.4f min %.4f'%(statistics.median(ev),lo), pat)

"""A completed send is a promise (issue 48): rank 0's isends, once waited for, reach rank 1 even
though rank 0 then shuts hoop down (or just exits) before rank 1 has posted a receive."""
import os
import sys
import unittest

from support import HERE, hooprun, torch_free_module

torch_free_module()


class LateReceiver(unittest.TestCase):
    def test_completed_isends_reach_a_late_receiver(self):
        rank = os.path.join(HERE, "late_receiver_rank.py")
        for transport in ("tcp", "shm"):
            for mode in ("shutdown", "exit"):
                for k in ("1", "100"):
                    r = hooprun(2, [sys.executable, rank, k, mode], env={"HOOP_TRANSPORT": transport}, timeout=90)
                    with self.subTest(transport=transport, mode=mode, k=k):
                        self.assertEqual(r.returncode, 0, r.output)
                        self.assertIn(f"late-receiver rank 1 got {k}", r.output)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for firewalld on a private D-Bus bus, for the firewall applet's firewalld backend
tests: it owns org.fedoraproject.FirewallD1 and answers the zone interface's source methods the
way firewalld does (INVALID_ZONE, ZONE_ALREADY_SET, ZONE_CONFLICT, UNKNOWN_SOURCE), keeping
the sources in memory. It never touches the network. Needs Debian's python3-dbus and
python3-gi (run with /usr/bin/python3).

usage: fake_firewalld.py BUS_ADDRESS   (prints "ready" once the name is owned)"""
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

ZONE_IFACE = "org.fedoraproject.FirewallD1.zone"
ZONES = {"block", "dmz", "drop", "external", "home", "internal", "public", "trusted", "work"}


class FirewallError(dbus.DBusException):
    _dbus_error_name = "org.fedoraproject.FirewallD1.Exception"


class Zones(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/org/fedoraproject/FirewallD1")
        self.sources = {}  # source -> zone

    def _zone(self, zone):
        if zone not in ZONES:
            raise FirewallError(f"INVALID_ZONE: {zone}")

    @dbus.service.method(ZONE_IFACE, in_signature="ss", out_signature="s")
    def addSource(self, zone, source):
        self._zone(zone)
        if source in self.sources:
            bound = self.sources[source]
            raise FirewallError(f"ZONE_ALREADY_SET: '{source}' already bound to '{zone}'" if bound == zone
                                else f"ZONE_CONFLICT: '{source}' already bound to '{bound}'")
        self.sources[source] = str(zone)
        return zone

    @dbus.service.method(ZONE_IFACE, in_signature="ss", out_signature="s")
    def removeSource(self, zone, source):
        self._zone(zone)
        if self.sources.get(source) != zone:
            raise FirewallError(f"UNKNOWN_SOURCE: {source}")
        del self.sources[source]
        return zone

    @dbus.service.method(ZONE_IFACE, in_signature="ss", out_signature="b")
    def querySource(self, zone, source):
        self._zone(zone)
        return self.sources.get(source) == zone

    @dbus.service.method(ZONE_IFACE, in_signature="s", out_signature="as")
    def getSources(self, zone):
        self._zone(zone)
        return sorted(s for s, z in self.sources.items() if z == zone)


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(sys.argv[1])
    zones = Zones(bus)
    name = dbus.service.BusName("org.fedoraproject.FirewallD1", bus)
    print("ready", flush=True)
    GLib.MainLoop().run()
    del zones, name


if __name__ == "__main__":
    main()
